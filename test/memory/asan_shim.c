/*
 * asan_shim.c: preloaded after libasan by test/memory/run.sh, so that the
 * AddressSanitizer runtime can start inside PostgreSQL's server at all.
 *
 * The server is not instrumented, so the runtime is preloaded and starts
 * lazily, at the first malloc.  On Debian 12 that first malloc happens in
 * libgpg-error's constructor, inside bindtextdomain(), while glibc holds its
 * gettext lock.  Starting, the runtime looks up "swift_demangle" with dlsym;
 * the failed lookup makes dlerror() translate its message, which takes the
 * same lock again and leaves it corrupt: the next bindtextdomain() (the
 * postmaster's, or psql's) then waits forever.  With this symbol defined the
 * lookup succeeds and nothing is translated.  (It is only ever called for
 * Swift symbol names, which the server has none of.)
 *
 * It also gives UndefinedBehaviorSanitizer its options: its runtime starts
 * late, in a backend, where it cannot read UBSAN_OPTIONS any more (the
 * postmaster overwrites its environment block for the ps display), so its
 * reports go to the server's stderr, the server log, with a stack trace.
 */
char *swift_demangle(const char *mangled, unsigned long mangled_length, char *output,
					 unsigned long *output_size, unsigned int flags);

char *
swift_demangle(const char *mangled, unsigned long mangled_length, char *output,
			   unsigned long *output_size, unsigned int flags)
{
	(void) mangled;
	(void) mangled_length;
	(void) output;
	(void) output_size;
	(void) flags;
	return 0;
}

const char *__ubsan_default_options(void);

const char *
__ubsan_default_options(void)
{
	return "print_stacktrace=1:halt_on_error=0";
}

/*-------------------------------------------------------------------------
 *
 * checkpoint_check.c
 *	  The C edition's check of a checkpoint before it is appended
 *	  (sandbox_store_internal._checkpoint_check): its size against
 *	  sandbox_store.max_checkpoint_bytes, its ids (SBC07), fields and entries
 *	  (SBC08), in one pass over the jsonb, and the blob keys it points to.
 *
 * The rest of the checkpoint store is SQL (src/sql/parts/shared/checkpoints/);
 * the SQL edition has a PL/pgSQL function of the same name and contract
 * (src/sql/parts/sql-edition/checkpoint_check._checkpoint_check.sql).  The checks, their order (the
 * first bad file entry in array order, then a path listed twice, then an
 * entry beneath a file, then the artifacts in order) and every message are
 * the same in both, as docs/reference.md "Sandbox checkpoints" documents
 * them; a JSON value in a message is written as jsonb_out writes it.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/json.h"
#include "utils/numeric.h"

#define FILE_KEY_PREFIX     "sandbox-files/sha256/"
#define ARTIFACT_KEY_PREFIX "sandbox-artifacts/"

/* A string of the checkpoint: bytes in the jsonb, not terminated. */
typedef struct CpString
{
	const char *data;
	int len;
} CpString;

/* A file entry, for the checks across entries. */
typedef struct CpFile
{
	CpString path;
	bool is_file;
} CpFile;

SB_NORETURN_BEFORE static void invalid_entry(const char *detail) SB_NORETURN_AFTER;

/* SBC08, "invalid checkpoint entry", with detail. */
static void
invalid_entry(const char *detail)
{
	ereport(ERROR, (errcode(ERRCODE_SBC_INVALID_ENTRY), errmsg("invalid checkpoint entry"),
					errdetail_internal("%s", detail)));
	pg_unreachable();
}

/* A JSON value as jsonb_out writes it (NULL: SQL NULL, written "null"). */
static char *
json_text(JsonbValue *v)
{
	Jsonb *j;

	if (v == NULL)
		return pstrdup("null");
	j = JsonbValueToJsonb(v);
	return JsonbToCString(NULL, &j->root, VARSIZE(j));
}

/* A string as a JSON string (to_jsonb(text)). */
static char *
json_string(CpString s)
{
	StringInfoData buf;

	initStringInfo(&buf);
	escape_json(&buf, pnstrdup(s.data, s.len));
	return buf.data;
}

/* The member key of object container c, or NULL. */
static JsonbValue *
member(JsonbContainer *c, const char *key)
{
	return getKeyJsonValueFromContainer(c, key, strlen(key), NULL);
}

static bool
is_string(const JsonbValue *v)
{
	return v != NULL && v->type == jbvString;
}

static bool
is_object(const JsonbValue *v)
{
	return v != NULL && v->type == jbvBinary && JsonContainerIsObject(v->val.binary.data);
}

static bool
is_array(const JsonbValue *v)
{
	return v != NULL && v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data) &&
		   !JsonContainerIsScalar(v->val.binary.data);
}

/* Present and neither a string nor JSON null. */
static bool
not_string_or_null(const JsonbValue *v)
{
	return v != NULL && v->type != jbvString && v->type != jbvNull;
}

static CpString
string_of(const JsonbValue *v)
{
	CpString s = {v->val.string.val, v->val.string.len};

	return s;
}

static bool
string_is(const JsonbValue *v, const char *s)
{
	return is_string(v) && v->val.string.len == (int) strlen(s) &&
		   memcmp(v->val.string.val, s, v->val.string.len) == 0;
}

/*
 * A number written (as jsonb writes it) as up to 16 digits, with a minus
 * sign if negative is allowed: ^-?[0-9]{1,16}$ or ^[0-9]{1,16}$.  Its value
 * in *value.
 */
static bool
whole_number(const JsonbValue *v, bool negative, int64 *value)
{
	char *text;
	const char *p;
	int digits = 0;
	int64 n = 0;

	if (v == NULL || v->type != jbvNumeric)
		return false;
	text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
	p = text;
	if (negative && *p == '-')
		p++;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		if (digits < 16)
			n = n * 10 + (*p - '0');
	if (*p != '\0' || digits < 1 || digits > 16)
		return false;
	*value = text[0] == '-' ? -n : n;
	return true;
}

/*
 * SBC07 for an id (checkpoint, thread or parent checkpoint): v must be a
 * string of 1..max_bytes bytes.
 */
static void
check_id(const JsonbValue *v, bool null_ok, const char *what, int max_bytes)
{
	if (v == NULL || v->type == jbvNull)
	{
		if (null_ok)
			return;
	}
	else if (v->type == jbvString && v->val.string.len >= 1 && v->val.string.len <= max_bytes)
		return;
	ereport(
		ERROR,
		(errcode(ERRCODE_SBC_INVALID_ID), errmsg("invalid %s", what),
		 errdetail("A %s is a string of 1 to %d bytes; the value given is %s.", what, max_bytes,
				   v != NULL && v->type == jbvString ? psprintf("%d bytes long", v->val.string.len)
													 : "missing")));
}

/* A path: ^[^/\\]+(/[^/\\]+)*$, no segment . or .., no drive (^[A-Za-z]:). */
static bool
normalized_path(CpString p)
{
	int start = 0;

	if (p.len >= 2 &&
		((p.data[0] >= 'A' && p.data[0] <= 'Z') || (p.data[0] >= 'a' && p.data[0] <= 'z')) &&
		p.data[1] == ':')
		return false;
	for (int i = 0; i <= p.len; i++)
	{
		if (i < p.len && p.data[i] == '\\')
			return false;
		if (i == p.len || p.data[i] == '/')
		{
			int seg = i - start;

			if (seg == 0)
				return false;
			if (p.data[start] == '.' && (seg == 1 || (seg == 2 && p.data[start + 1] == '.')))
				return false;
			start = i + 1;
		}
	}
	return true;
}

/* ^sandbox-files/sha256/[0-9a-f]{64}$ */
static bool
file_blob_key(const JsonbValue *v)
{
	const int prefix = sizeof(FILE_KEY_PREFIX) - 1;

	if (!is_string(v) || v->val.string.len != prefix + 64 ||
		memcmp(v->val.string.val, FILE_KEY_PREFIX, prefix) != 0)
		return false;
	for (int i = prefix; i < prefix + 64; i++)
	{
		char c = v->val.string.val[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

/* Compare two strings as bytes, each with a '/' after it (path || '/'). */
static int
compare_slash(CpString a, CpString b)
{
	for (int i = 0;; i++)
	{
		int x = i < a.len ? (unsigned char) a.data[i] : (unsigned char) '/';
		int y = i < b.len ? (unsigned char) b.data[i] : (unsigned char) '/';

		if (x != y)
			return x - y;
		if (i >= a.len || i >= b.len)
			return (i < a.len) - (i < b.len);
	}
}

static int
compare_files(const void *a, const void *b)
{
	return compare_slash(((const CpFile *) a)->path, ((const CpFile *) b)->path);
}

/* Compare as bytes (COLLATE "C"). */
static int
compare_strings(const void *a, const void *b)
{
	const CpString *x = a;
	const CpString *y = b;
	int c = memcmp(x->data, y->data, Min(x->len, y->len));

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* The file entries: each checked, in order; then across entries. */
static int
check_files(JsonbContainer *files, CpString *keys)
{
	int n = JsonContainerSize(files);
	CpFile *entries = palloc(sizeof(CpFile) * Max(n, 1));
	int nkeys = 0;

	for (int i = 0; i < n; i++)
	{
		JsonbValue *ent = getIthJsonbValueFromContainer(files, i);
		JsonbContainer *c;
		JsonbValue *path, *kind, *key, *size;
		char *p;
		int64 bytes;

		if (!is_object(ent) || !is_string(path = member(ent->val.binary.data, "path")))
			invalid_entry("Each file entry is an object with a path.");
		c = ent->val.binary.data;
		p = json_string(string_of(path));
		if (!normalized_path(string_of(path)))
			invalid_entry(psprintf("Path %s is not a normalized relative path.", p));
		kind = member(c, "kind");
		key = member(c, "blobKey");
		size = member(c, "size");
		if (string_is(kind, "dir") && (key != NULL || size != NULL))
			invalid_entry(
				psprintf("Directory %s has a blob key or a size; only files have them.", p));
		if (string_is(kind, "file"))
		{
			if (!file_blob_key(key))
				invalid_entry(psprintf("The blob key of file %s is not sandbox-files/sha256/ and "
									   "64 lowercase hex digits.",
									   p));
			if (!whole_number(size, false, &bytes) || bytes > INT64CONST(9007199254740991))
				invalid_entry(psprintf("The size of file %s is not a whole number of bytes.", p));
			keys[nkeys++] = string_of(key);
		}
		else if (!string_is(kind, "dir"))
			invalid_entry(psprintf("Entry %s has kind %s; a kind is \"file\" or \"dir\".", p,
								   json_text(kind)));
		entries[i].path = string_of(path);
		entries[i].is_file = string_is(kind, "file");
	}

	/*
	 * Ordered by path || '/' as bytes: a path listed twice is two neighbours,
	 * and everything beneath an entry comes right after it.
	 */
	qsort(entries, n, sizeof(CpFile), compare_files);
	for (int i = 0; i + 1 < n; i++)
		if (compare_slash(entries[i].path, entries[i + 1].path) == 0)
			invalid_entry(
				psprintf("Path %s is listed more than once.", json_string(entries[i].path)));
	for (int i = 0; i + 1 < n; i++)
	{
		CpString a = entries[i].path;
		CpString b = entries[i + 1].path;

		if (entries[i].is_file && b.len > a.len && memcmp(a.data, b.data, a.len) == 0 &&
			b.data[a.len] == '/')
			invalid_entry(psprintf("Path %s is beneath a file.", json_string(b)));
	}
	pfree(entries);
	return nkeys;
}

/* The artifacts, in order. */
static int
check_artifacts(JsonbContainer *artifacts, CpString *keys)
{
	int n = JsonContainerSize(artifacts);
	const int prefix = sizeof(ARTIFACT_KEY_PREFIX) - 1;

	for (int i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(artifacts, i);
		JsonbContainer *c = is_object(e) ? e->val.binary.data : NULL;
		JsonbValue *id = c ? member(c, "artifactId") : NULL;
		JsonbValue *name = c ? member(c, "name") : NULL;
		JsonbValue *mime = c ? member(c, "mimeType") : NULL;
		JsonbValue *key;
		int64 size;
		char *p;

		if (c == NULL || !is_string(id) || id->val.string.len == 0 || !is_string(name) ||
			name->val.string.len == 0 || !is_string(mime) || mime->val.string.len == 0 ||
			!whole_number(member(c, "size"), false, &size) || member(c, "createdAt") == NULL ||
			member(c, "createdAt")->type != jbvNumeric)
			invalid_entry(
				"Each artifact has artifactId, name, mimeType, size, blobKey and createdAt.");
		p = json_string(string_of(id));
		key = member(c, "blobKey");
		if (!is_string(key) || key->val.string.len <= prefix ||
			memcmp(key->val.string.val, ARTIFACT_KEY_PREFIX, prefix) != 0)
			invalid_entry(
				psprintf("The blob key of artifact %s is not under sandbox-artifacts/.", p));
		if (key->val.string.len > 1024)
			invalid_entry(psprintf("The blob key of artifact %s has %d bytes; at most 1024 are "
								   "allowed.",
								   p, key->val.string.len));
		keys[i] = string_of(key);
	}
	return n;
}

PG_FUNCTION_INFO_V1(sandbox_checkpoint_check_v1_5);

/*
 * sandbox_store_internal._checkpoint_check(checkpoint jsonb) RETURNS text[]:
 * raises SBC08 if the checkpoint is larger than max_checkpoint_bytes (its
 * size as pg_column_size gives it, before it is read), SBC07 or SBC08 if it
 * is not as the contract says; returns its blob keys, each once, by bytes.
 */
Datum
sandbox_checkpoint_check_v1_5(PG_FUNCTION_ARGS)
{
	Jsonb *cp;
	JsonbContainer *root;
	JsonbValue *v, *files, *artifacts;
	int64 created;
	CpString *keys;
	int nkeys, nfiles, nartifacts, ndistinct = 0;
	Datum *elems;

	sb_check_library_version();
	if (PG_ARGISNULL(0))
		invalid_entry("A checkpoint is a JSON object.");
	if (sb_max_checkpoint_bytes > 0 &&
		toast_datum_size(PG_GETARG_DATUM(0)) > (Size) sb_max_checkpoint_bytes)
		invalid_entry(psprintf("The checkpoint is %zu bytes; sandbox_store.max_checkpoint_bytes "
							   "allows at most %d.",
							   toast_datum_size(PG_GETARG_DATUM(0)), sb_max_checkpoint_bytes));
	cp = PG_GETARG_JSONB_P(0);
	if (!JB_ROOT_IS_OBJECT(cp))
		invalid_entry("A checkpoint is a JSON object.");
	root = &cp->root;

	check_id(member(root, "id"), false, "checkpoint id", 1024);
	check_id(member(root, "threadId"), false, "thread id", 1000);
	check_id(member(root, "parentCheckpointId"), true, "parent checkpoint id", 1024);
	if (!whole_number(member(root, "createdAt"), true, &created) ||
		created < -INT64CONST(8640000000000000) || created > INT64CONST(8640000000000000))
		invalid_entry("createdAt is a whole number of milliseconds since 1970-01-01 UTC.");
	v = member(root, "reason");
	if (!string_is(v, "automatic") && !string_is(v, "named") && !string_is(v, "fork-root"))
		invalid_entry("reason is \"automatic\", \"named\" or \"fork-root\".");
	if (not_string_or_null(member(root, "label")))
		invalid_entry("label is a string when present.");
	if (not_string_or_null(member(root, "sourceRunId")))
		invalid_entry("sourceRunId is a string when present.");
	if (member(root, "conversation") == NULL)
		invalid_entry("conversation is required (the model messages).");

	files = member(root, "files");
	if (!is_array(files))
		invalid_entry("files is an array.");
	nfiles = JsonContainerSize(files->val.binary.data);
	artifacts = member(root, "artifacts");
	keys = palloc(sizeof(CpString) * Max(nfiles, 1));
	nkeys = check_files(files->val.binary.data, keys);
	if (!is_array(artifacts))
		invalid_entry("artifacts is an array.");
	nartifacts = JsonContainerSize(artifacts->val.binary.data);
	keys = repalloc(keys, sizeof(CpString) * Max(nkeys + nartifacts, 1));
	nkeys += check_artifacts(artifacts->val.binary.data, keys + nkeys);

	/* The blob keys, each once, by bytes. */
	qsort(keys, nkeys, sizeof(CpString), compare_strings);
	elems = palloc(sizeof(Datum) * Max(nkeys, 1));
	for (int i = 0; i < nkeys; i++)
		if (i == 0 || compare_strings(&keys[i - 1], &keys[i]) != 0)
			elems[ndistinct++] =
				PointerGetDatum(cstring_to_text_with_len(keys[i].data, keys[i].len));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, ndistinct, TEXTOID, -1, false, TYPALIGN_INT));
}

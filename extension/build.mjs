// Bundles the extension into extension/dist/extension.js (vscode is provided by the editor).
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
await esbuild.build({
  entryPoints: ['extension/src/extension.ts'],
  bundle: true,
  outfile: 'extension/dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
});

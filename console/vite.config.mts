/**
 * The sandbox console's build (deploy/build-console.mjs runs it): one HTML page, one
 * hashed script and one hashed stylesheet under console/dist/, served by the gateway at
 * /console/ (gateway/console.ts). Preact's automatic JSX runtime through Vite's own
 * transformer (no Babel preset). No module-preload polyfill: it would be a second
 * script, and every browser the console supports preloads modules itself. No source
 * maps in the served files. The build script passes `root` (this folder).
 *
 * `npm run console:dev` serves the sources with Vite's dev server (the page reloads on a change) on
 * http://127.0.0.1:5173/console/ and forwards /v1 to the system `npm start` runs on
 * port 8080, so the page still calls its own origin.
 */
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  server: { host: '127.0.0.1', port: 5173, strictPort: true, proxy: { '/v1': 'http://127.0.0.1:8080' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    modulePreload: { polyfill: false },
    sourcemap: false,
    // Everything in files, nothing inlined into the HTML as data: URLs or inline script.
    assetsInlineLimit: 0,
  },
});

import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the Engram server under /console; the client is bundled from its sources, so the console
// needs no separate build of packages/client.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  resolve: { alias: { '@engram/client': fileURLToPath(new URL('../client/src/index.ts', import.meta.url)) } },
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false },
});

import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Served by the service at /console/ (packages/server/src/http/ops/console.ts): relative to that base, no CDN.
export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The official SDK client carries every resource (about 100 kB gzip); one chunk is what the page needs.
    chunkSizeWarningLimit: 800,
    sourcemap: false,
    // One page, one bundle: nothing is loaded from elsewhere, so it works offline.
    assetsInlineLimit: 0,
  },
});

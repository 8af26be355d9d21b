#!/usr/bin/env node
// The published entry: the esbuild bundle (npm run build). Kept as a separate file so the
// `bin` path stays stable while dist/ is regenerated.
import '../dist/baton.js';

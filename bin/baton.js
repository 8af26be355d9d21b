#!/usr/bin/env node
// The published entry: dist/baton.js, which runs the app's bundle from its code cache
// (npm run build). Kept as a separate file so the `bin` path stays stable while dist/ is
// regenerated. CommonJS (bin/package.json): an ES module entry would start Node's ESM loader,
// which nothing on a command's path needs.
require('../dist/baton.js');

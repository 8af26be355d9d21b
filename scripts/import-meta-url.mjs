// Injected into the app's CommonJS bundle (scripts/build.mjs) to stand for `import.meta.url`,
// which CommonJS has no value for: config.ts requires its YAML parser relative to it.
// `require` and `__filename` are the bundle's own (scripts/bundle-runtime.mjs).
export const importMetaUrl = require('node:url').pathToFileURL(__filename).href;

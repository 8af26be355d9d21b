// `node --import <this>`: reports every JavaScript file the traced process loads, on stderr, as
// `BATON_BENCH_LOAD <file URL>` (test/bench/lib/load-trace.ts reads them).
import { writeSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

const report = (url) => writeSync(2, `\nBATON_BENCH_LOAD ${url}\n`);

// ES modules, through a module hook.
register(new URL('./load-hooks.mjs', import.meta.url));

// The app is not a module: it runs as a vm.Script (bin/baton.js),
// which the module hooks never see; they are reported here.
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(code, options) {
    super(code, options);
    if (typeof options?.filename === 'string') report(pathToFileURL(options.filename).href);
  }
};

// CommonJS modules (the bin, a package required from node_modules) are in the require cache at exit.
const require = createRequire(import.meta.url);
process.on('exit', () => {
  for (const file of Object.keys(require.cache)) report(pathToFileURL(file).href);
});

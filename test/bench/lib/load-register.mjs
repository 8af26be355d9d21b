// `node --import <this>`: registers load-hooks.mjs for the process being traced.
import { writeSync } from 'node:fs';
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

register(new URL('./load-hooks.mjs', import.meta.url));

// The UI bundle is not an ES module: it runs as a vm.Script from its code cache
// (scripts/ui-bundle-runtime.mjs), which the module hooks never see; it is reported here.
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(code, options) {
    super(code, options);
    if (typeof options?.filename === 'string') writeSync(2, `\nBATON_BENCH_LOAD ${pathToFileURL(options.filename).href}\n`);
  }
};

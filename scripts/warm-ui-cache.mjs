// `node scripts/warm-ui-cache.mjs REACT_BUNDLE INK_BUNDLE` (run by the build,
// scripts/package-bundles.mjs): loads the UI bundles without a cache, draws a few frames of the kinds
// baton's views draw, so V8 compiles the render paths, and writes each bundle's code cache
// beside it (scripts/bundle-runtime.mjs).
import { PassThrough } from 'node:stream';
import { fromReactBundle, runCachedBundle } from './bundle-runtime.mjs';
import { writeAtomically } from './write-atomically.mjs';

const [reactFile, inkFile] = process.argv.slice(2);
const react = runCachedBundle(reactFile, { useCache: false });
const ink = runCachedBundle(inkFile, { useCache: false, modules: fromReactBundle(react.exports) });
const { Box, Text, render, measureElement } = ink.exports.ink;
const { createElement: h, useLayoutEffect, useRef, useState } = react.exports.react;

const terminal = Object.assign(new PassThrough(), { columns: 80, rows: 24, isTTY: true });
terminal.resume();

function Screen({ step }) {
  const body = useRef(null);
  const [, setHeight] = useState(0);
  useLayoutEffect(() => {
    if (body.current) setHeight(measureElement(body.current).height);
  });
  return h(Box, { flexDirection: 'column', width: 80 },
    h(Text, { wrap: 'truncate-end' }, h(Text, { bold: true }, 'baton status'), `  step ${step}  ·  reading…`),
    h(Box, { ref: body, flexDirection: 'column', borderStyle: 'round', paddingX: 1, width: 80 },
      h(Text, { wrap: 'wrap' }, h(Text, { bold: true }, 'LOCAL'), '  /var/lib/baton/state/ca'),
      h(Box, null, h(Box, { width: 13, flexShrink: 0 }, h(Text, null, 'fingerprint')), h(Text, null, 'SHA256:', h(Text, { color: 'red', bold: true }, 'x'), 'AbCdEf0123456789+/')),
      h(Text, { dimColor: true }, '         ^'),
    ),
    h(Box, { borderStyle: 'single', borderLeft: false, borderRight: false, borderBottom: false }, h(Text, { color: 'green' }, '✓ in sync')),
    h(Text, { dimColor: true, wrap: 'truncate-end' }, 'r read now · q quit — a line long enough to be cut at the right edge of an 80-column terminal'),
  );
}

const app = render(h(Screen, { step: 1 }), { stdout: terminal, stderr: terminal, patchConsole: false, exitOnCtrlC: false, maxFps: 1000 });
await new Promise((resolve) => setTimeout(resolve, 50));
app.rerender(h(Screen, { step: 2 }));
await new Promise((resolve) => setTimeout(resolve, 50));
app.unmount();
await app.waitUntilExit();

for (const [file, { script }] of [[reactFile, react], [inkFile, ink]]) writeAtomically(`${file}.cache`, script.createCachedData());

// `node --import <this>`: registers load-hooks.mjs for the process being traced.
import { register } from 'node:module';

register(new URL('./load-hooks.mjs', import.meta.url));

#!/usr/bin/env node
// Development entry: same as run.js; run `npm run build` (or `npx tsc -w`) alongside.
import '../dist/src/util/polyfill.js'
import { execute } from '@oclif/core'

await execute({ development: true, dir: import.meta.url })

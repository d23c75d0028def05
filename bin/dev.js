#!/usr/bin/env node
// Development entry: same as run.js; run `npm run build` (or `npx tsc -w`) alongside.
import '../dist/src/util/polyfill.js'
import { execute } from '@oclif/core'
import { helpArgv } from '../dist/src/cli/go-flags.js'

await execute({ development: true, dir: import.meta.url, args: helpArgv(process.argv.slice(2)) })

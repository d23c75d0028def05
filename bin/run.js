#!/usr/bin/env node
// Production entry: compiled commands in dist/. The polyfill must load before libp2p.
import '../dist/src/util/polyfill.js'
import { execute } from '@oclif/core'
import { helpArgv } from '../dist/src/cli/go-flags.js'

await execute({ dir: import.meta.url, args: helpArgv(process.argv.slice(2)) })

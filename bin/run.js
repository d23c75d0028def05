#!/usr/bin/env node
// Production entry: compiled commands in dist/. The polyfill must load before libp2p.
import '../dist/src/util/polyfill.js'
import { execute } from '@oclif/core'

await execute({ dir: import.meta.url })

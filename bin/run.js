#!/usr/bin/env node
// Production entry: compiled commands in dist/. The code cache goes first (it must see oclif
// compile); the polyfill must load before libp2p.
import { enableCompileCache } from '../dist/src/util/compile-cache.js'
enableCompileCache()
// oclif checks its own engines range with semver (48 modules) on every start; this package's
// engines field already asks for a newer Node than oclif does
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1'
await import('../dist/src/util/polyfill.js')
const { execute } = await import('@oclif/core')
const { helpArgv } = await import('../dist/src/cli/go-flags.js')

await execute({ dir: import.meta.url, args: helpArgv(process.argv.slice(2)) })

#!/usr/bin/env node
// Production entry: the bundle in dist/bundle/ (npm run build makes it; docs/decisions/0019). The
// compile cache goes first (it must be on before the modules it caches load), then stack traces
// that name the TypeScript files through the bundle's source maps (read when a trace is formatted).
// A client verb with plain arguments then runs from dist/bundle/fast/ without oclif; anything else
// goes to oclif, which finds each verb through oclif.manifest.json and loads only that verb's file
// and the chunks it imports.
import { fileURLToPath } from 'node:url'
const { enableCompileCache, installBundleStackTraces } = await import('../dist/bundle/cli/boot.js')
enableCompileCache()
installBundleStackTraces(fileURLToPath(new URL('../dist/bundle/', import.meta.url)))
// oclif checks its own engines range with semver on every start; this package's engines field
// already asks for a newer Node than oclif does
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1'
const { main } = await import('../dist/bundle/cli/main.js')
await main(import.meta.url, process.argv.slice(2))

#!/usr/bin/env node
// Production entry: the bundle in dist/bundle/ (npm run build makes it; docs/decisions/0019). Stack
// traces name the TypeScript files through the bundle's source maps. The compile cache goes first
// (it must be on before the modules it caches load); oclif then finds each verb through
// oclif.manifest.json and loads only that verb's file and the chunks it imports.
process.setSourceMapsEnabled(true)
const { enableCompileCache } = await import('../dist/bundle/compile-cache.js')
enableCompileCache()
// oclif checks its own engines range with semver on every start; this package's engines field
// already asks for a newer Node than oclif does
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1'
const { main } = await import('../dist/bundle/cli/main.js')
await main(import.meta.url, process.argv.slice(2))

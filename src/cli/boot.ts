/**
 * What bin/run.js sets up before it loads the command line: the compile cache (before the modules
 * it caches load) and stack traces that name the TypeScript files of the bundle.
 */
export { enableCompileCache } from '../util/compile-cache.js'
export { installBundleStackTraces } from '../util/stack-traces.js'

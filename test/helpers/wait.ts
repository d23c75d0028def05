/** Polls `check` until it returns a truthy value or the deadline passes. Never a fixed sleep. */
export { waitUntil as waitFor } from '../../src/util/wait-until.js'

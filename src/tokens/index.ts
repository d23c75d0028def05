/** Token domain: minting, splitting, chain ingestion, balances (storage and signing injected). */
export * from './token-service.js'
export * from './select.js'
export * from './verifier.js'

/** Identity domain: DID storage, creation/import, signing through prompts, announcements, resolution. */
export * from './announcement.js'
export * from './did-store.js'
export * from './identity-service.js'

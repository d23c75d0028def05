/**
 * Worker entry of the chain-validation pool (chain-validation-pool.ts): validates one slice of a
 * token chain with `validateChainHere`, checking signatures against DID documents it asks the
 * calling thread for (and keeps: a DID's public files never change, the DID is their hash).
 */
import { workerData } from 'node:worker_threads'
import { serveWorkerJobs } from '../util/worker-pool.js'
import { Lru } from '../util/lru.js'
import { validateChainHere } from '../tokenchain/validate.js'
import { setSecpBackend, type SecpBackendName } from '../wallet/secp-backend.js'
import type { DidDocument } from '../wallet/index.js'
import { didSignatureVerifier } from './verifier.js'
import type { SliceJob, SliceResult } from './chain-validation-pool.js'

const data = workerData as { secpBackend?: SecpBackendName } | undefined
if (data?.secpBackend !== undefined) setSecpBackend(data.secpBackend)

const MAX_DOCS = 4096
const docs = new Lru<DidDocument>(MAX_DOCS)

serveWorkerJobs<SliceJob, SliceResult>(async (job, ask) => {
  for (const d of job.docs ?? []) docs.set(`${job.resolver}:${d.did}`, d)
  const resolve = async (did: string): Promise<DidDocument | undefined> => {
    const key = `${job.resolver}:${did}`
    const hit = docs.get(key)
    if (hit !== undefined) return hit
    const doc = await ask({ did }) as DidDocument | undefined
    if (doc !== undefined) docs.set(key, doc)
    return doc
  }
  const known = new Set(job.known ?? [])
  const added: string[] = []
  const result = await validateChainHere(job.blocks, {
    ...job.ctx,
    verifier: didSignatureVerifier({ resolve }),
    ...(job.known !== undefined ? { cache: { has: (k: string) => known.has(k), add: (k: string) => { known.add(k); added.push(k) } } } : {})
  }, job.after)
  return { result, added }
})

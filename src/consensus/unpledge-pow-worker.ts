/**
 * Checks one unpledge proof in its own worker thread (unpledge-pow-verifier.ts starts it), so a
 * proof with long segments never holds the node's event loop. Receives the proof, what it must be
 * for and the options in workerData; posts the VerifyResult back.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { verifyProof, type UnpledgeProof, type VerifyResult } from './unpledge-pow.js'

interface Job { proof: UnpledgeProof, expect: { token: string, pledger: string, txid: string }, opts: { minLevel?: number, full?: boolean } }

const job = workerData as Job
let result: VerifyResult
try {
  result = verifyProof(job.proof, job.expect, job.opts)
} catch (e) {
  result = { valid: false, reason: `not a proof (${e instanceof Error ? e.message : String(e)})` }
}
parentPort!.postMessage(result)

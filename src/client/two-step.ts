import type { Envelope, PendingSignature } from '../api/contract/envelope.js'

/** A challenge of the two-step flow: the node asks for a key password or for a signature of `hash`. */
export type SignatureChallenge = PendingSignature

/**
 * How a program answers the challenges of a two-step operation. `password` is asked for the DID's
 * private-key password (the node signs); `sign` for a signature of a key held outside the node
 * (base64 hash in, base64 signature out). `attempt` counts from 1 and grows after a wrong password.
 */
export interface SignatureHandlers {
  password?: (challenge: SignatureChallenge, attempt: number) => string | Promise<string>
  sign?: (challenge: SignatureChallenge & { hash: string }) => string | Promise<string>
  /** how many times a wrong password is asked again (default 0: the first WRONG_PASSWORD is thrown) */
  passwordRetries?: number
}

/** The challenge in an envelope, if the envelope is the first step of a two-step operation. */
export function pendingChallenge (env: Envelope<unknown>): SignatureChallenge | undefined {
  const r = env.result as Partial<PendingSignature> | null
  if (env.status && r !== null && typeof r === 'object' && typeof r.id === 'string' && typeof r.only_priv_key === 'boolean') return r as PendingSignature
  return undefined
}

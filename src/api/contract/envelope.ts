/** The response envelope every route answers with, success or failure. */
export interface Envelope<T = unknown> {
  status: boolean
  message: string
  result: T | null
}

export function ok<T> (message: string, result: T | null = null): Envelope<T> {
  return { status: true, message, result }
}

export function fail (message: string, result: unknown = null): Envelope<unknown> {
  return { status: false, message, result }
}

/** First answer of an operation that needs a password or an external signature (the two-step flow). */
export interface PendingSignature {
  id: string
  mode: number
  hash: string | null
  only_priv_key: boolean
}

export const PASSWORD_NEEDED = 'Password needed'
export const SIGNATURE_NEEDED = 'Signature needed'

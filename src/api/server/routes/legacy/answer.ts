import type { Envelope } from '../../../contract/envelope.js'
import { RbtError } from '../../../../util/errors.js'

/**
 * The reference answers every handled outcome of its `/api` routes with HTTP 200 and reports a
 * failure in the envelope (`status:false`, the reason in `message`). The adapters run the /svc/v1
 * service and turn its refusal into that envelope, with the route's extra top-level keys
 * (`extra`: their values on failure). Malformed input is still refused (400) by the route table
 * before an adapter runs; an unexpected fault stays a 500.
 */
export async function answered<T> (run: () => Promise<Envelope<T>>, extra: Record<string, unknown> = {}): Promise<Envelope<T>> {
  try {
    return await run()
  } catch (err) {
    if (!(err instanceof RbtError)) throw err
    return withKeys<T>({ status: false, message: err.message, result: null }, extra)
  }
}

/** The envelope with the reference's sibling keys (`account_info`, `token_detials`, ...). */
export function withKeys<T> (env: Envelope<T>, keys: Record<string, unknown>): Envelope<T> {
  return Object.assign({}, env, keys)
}

/** The DID of a reference-style address: "<peer id>.<DID>" or the DID alone. */
export const didOf = (address: string): string => address.slice(address.lastIndexOf('.') + 1)

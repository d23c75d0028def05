/**
 * The single place where protocol ids of our request/response methods are built and parsed.
 * Shape: `/rbt/<method>/<version>`, e.g. `/rbt/did.resolve/1.0.0`.
 */
import { ErrorCode, RbtError } from '../util/errors.js'

export const RPC_PROTOCOL_PREFIX = '/rbt'
export const DEFAULT_METHOD_VERSION = '1.0.0'

/** Path segments under /rbt/ used by other protocols of ours; methods may not take these names. */
const RESERVED = new Set(['kad', 'pubsub', 'meshsub', 'floodsub'])
const METHOD_RE = /^[a-z][a-z0-9]*(?:[.-][a-z0-9]+)*$/i
const VERSION_RE = /^\d+\.\d+\.\d+$/

export function assertMethodName (method: string): void {
  if (!METHOD_RE.test(method) || RESERVED.has(method.toLowerCase())) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `invalid rpc method name "${method}" (letters, digits, '.' and '-', not ${[...RESERVED].join('/')})`)
  }
}

export function rpcProtocolId (method: string, version: string = DEFAULT_METHOD_VERSION): string {
  assertMethodName(method)
  if (!VERSION_RE.test(version)) throw new RbtError(ErrorCode.INVALID_INPUT, `invalid protocol version "${version}" (want major.minor.patch)`)
  return `${RPC_PROTOCOL_PREFIX}/${method}/${version}`
}

export function parseRpcProtocolId (protocol: string): { method: string, version: string } | undefined {
  const parts = protocol.split('/')
  if (parts.length !== 4 || parts[0] !== '' || `/${parts[1]}` !== RPC_PROTOCOL_PREFIX) return undefined
  const [, , method, version] = parts
  if (!METHOD_RE.test(method) || RESERVED.has(method.toLowerCase()) || !VERSION_RE.test(version)) return undefined
  return { method, version }
}

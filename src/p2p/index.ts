// Public API of the p2p layer. Only node composition code imports this; domain code receives
// narrow interfaces (e.g. RpcClient<...>) instead.
export {
  createP2pHost, parsePeerId, parseMultiaddr, DEFAULT_DHT_PROTOCOL, DHT_NAMESPACE,
  type P2pHost, type P2pHostOptions, type DhtOptions, type GossipOptions, type TimeoutOptions,
  type PubsubMessage, type PubsubHandler, type ProviderInfo, type FindProvidersOptions,
  type ProtocolHandler, type ProtocolHandlerOptions
} from './host.js'
export {
  createRpc, PING_MESSAGE, WIRE_VERSION,
  type Rpc, type RpcClient, type RpcOptions, type RpcLimits, type RpcContext, type RpcHandler, type RpcHandlers,
  type CallOptions, type BuiltinMethods, type UnarySpec, type PagedSpec, type MethodSpec, type MethodMapOf,
  type UnaryMethods, type PagedMethods, type RequestOf, type ResponseOf, type PageOf
} from './rpc.js'
export { rpcProtocolId, parseRpcProtocolId, assertMethodName, RPC_PROTOCOL_PREFIX, DEFAULT_METHOD_VERSION } from './protocol-id.js'
export {
  parseSwarmKey, loadSwarmKey, loadSwarmKeySync, formatSwarmKey, swarmKeyFromBytes, defaultSwarmKeyPath, findPackageRoot,
  type SwarmKey
} from './swarm-key.js'
export { loadOrCreatePeerKey, decodePeerKey, encodePeerKey, type PeerKey } from './peer-key.js'
export { encodeJson, decodeJson } from './codec.js'
export { closestQuery, kadKey, kadPeerKey, compareDistance, type QueryPeer, type ClosestQueryOptions, type ClosestQueryResult } from './closest-query.js'

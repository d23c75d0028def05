/** What the host makes of its listen addresses (which DHT scope, which are announced as they are). */

/** A loopback or private (RFC 1918, unique-local IPv6) IP listen address. */
export function isPrivateListenAddr (addr: string): boolean {
  const m = /^\/ip4\/([\d.]+)\//.exec(addr) ?? /^\/ip6\/([^/]+)\//.exec(addr)
  if (m === null) return false
  const ip = m[1]
  return ip.startsWith('127.') || ip.startsWith('10.') || ip.startsWith('192.168.') ||
    /^172\.(1[6-9]|2\d|3[01])\./.test(ip) || ip === '::1' || ip.toLowerCase().startsWith('fd')
}

/**
 * A listen address on a fixed port of a public IPv4 address: libp2p keeps such an address out of
 * what identify and the DHTs tell others until something (AutoNAT) confirms it, which nothing here
 * does, so a node listening on its public address advertised none and no DHT kept it (Kubo's WAN
 * table wants a public address). These are announced as they are, as go-libp2p does.
 */
export function announcedAsListened (addr: string): boolean {
  const m = /^\/ip4\/([\d.]+)\/tcp\/(\d+)$/.exec(addr)
  return m !== null && m[1] !== '0.0.0.0' && m[2] !== '0' && !isPrivateListenAddr(addr)
}

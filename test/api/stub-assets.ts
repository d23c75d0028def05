/** Stand-ins shared by the NFT and smart-contract route tests: an in-memory token ledger and a two-step flow that always asks for the password. */
export function memoryTokenLedger (tokens: Map<string, unknown>): never {
  return {
    token: async (id: string) => tokens.get(id),
    chain: async () => [],
    commit: async (build: (w: unknown) => void) => { build({ putToken: (t: { tokenId: string }) => tokens.set(t.tokenId, t) }) }
  } as never
}

export const passwordNeeded = { start: async () => ({ status: true, message: 'Password needed', result: { id: 'x', mode: 4, hash: null, only_priv_key: false } }) } as never

export const noTokens = { tokens: { all: async function * () {} } } as never

import { TokenService } from '../../tokens/index.js'
import { FtService } from '../../tokens/ft-service.js'
import type { Component, Factory } from '../component/component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import { createFtApi } from './ft-api.js'
import { createTokenApi } from './token-api.js'

/** RBT, part tokens and FTs: minting, chains, balances (docs/architecture.md, "Tokens and balances"). */
export interface TokensComponent extends Component {
  tokens: TokenService
  fts: FtService
}

type Needs = { storage: StorageComponent, identity: IdentityComponent, signing: SigningComponent }

export const tokensComponent: Factory<Needs, TokensComponent> = ({ base, storage, identity, signing }) => {
  const { options } = base
  const tokens = new TokenService({
    ledger: storage.tokenLedger,
    repos: storage.repos,
    verifier: identity.verifier(),
    localMint: { allowed: options.testNet, refusal: 'Local RBT generation is available only on a test network: start the node with -testNet' },
    testNet: options.testNet
  })
  const fts = new FtService({ store: storage.store, ledger: storage.tokenLedger, repos: storage.repos, tokens })
  return {
    tokens,
    fts,
    api: {
      tokens: createTokenApi(tokens, identity.identity, signing.signing),
      fts: createFtApi(fts, identity.identity, signing.signing)
    }
  }
}

/**
 * Live-network signatures (vectors.md §2.5–2.7). The public keys were recovered from each
 * signature over the first 32 ASCII characters of the hash; each recovered key, written into
 * pubKey.pem, reproduces the signer's DID, which pins the key, the signing rule and the DID rule.
 */
export const LIVE = [
  { name: 'C1 sender', hash: '3f31b49975fce7c24ee6b705e59f097ebc7be998d139cb164d72f565fcee8bff', sig: '304402200ebe7f12a6501ea9334bbac7f3063d6ac3998b9694e051e98170f3683797e04402204a7e4ff6ae418f55598cb1c6d353191cc9870b22c4aad37ea36ddb4164b0d106', key: '02a722ec281afa1389cc2f630c3dc9d67d072d528edd862a859871aac2a3b0affb', did: 'bafybmiaysyb5hbdb6clsk7jncdejxwomxumv3zos5t57f6bwz7numvaina' },
  { name: 'C2 sender', hash: '2528205ee902d5e537cfb6694ce017931a1cdd6be07e7af2867c803937dc5bb8', sig: '304402202fe718ca168deb42817cce1c758625a96e0f81c8a9d38a31ea874696f5a9cfef022003319304e31a81b5bb05f240f552869c48caf457e7be2d82c0306c0f832303c1', key: '0347214e120eaca93ac838957ccc06c91178a3e27a9cb9dd6a8ef4747d203b999b', did: 'bafybmihsas7ercw2upkuq5mpq2xrauwycxkes6pxxyj52ijfx7sgwsqr6m' },
  { name: 'S5 executor', hash: '48c36408b85a59525095b95ccb2b0241a33f192a53642d740419fb16f3acd842', sig: '3044022032786c4333d85492ac334f85ac597a67bf468bd20a40f01ba8febdd0aa30f0d1022010851bf1ff50f8b0db6f6cf11f543de27cf97aa8058551327a0e05db1b9bb4ea', key: '044a15aa37f31dbcaa1ab93d742ef1397ef9f76a9a26425cb4d4436ea1f781f977f59b1c16eec61f9c57732c6fc49278b17a939615d07d8a865a326c62620e008a', did: 'bafybmicggfkxfz667vnra3datk5h3y5el24ir7gx7tciciaaoniaxnadwi' },
  // B1 is high-S (s = 0xd5ad…): the reference produces and accepts these.
  { name: 'B1 genesis (high-S)', hash: 'dddfeea488ac5b0b0be323d7277023518f29031671f7eccb11639ff88f1f9243', sig: '304502201af02d06758a73f343a783f3077ce01cf5a0bf04655da0214fbf1c5c132eb7f9022100d5ad44f4bd090816649ee016e6521d82d06d0d3eedb775366d97d37ed4100054', key: '02a722ec281afa1389cc2f630c3dc9d67d072d528edd862a859871aac2a3b0affb', did: 'bafybmiaysyb5hbdb6clsk7jncdejxwomxumv3zos5t57f6bwz7numvaina' }
]

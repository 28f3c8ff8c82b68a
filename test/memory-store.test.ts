import { MemoryQueueStore } from '../src/adapters/memory/queue-store.js'
import { queueStoreContract, type StoreHarness } from './contract/queue-store.js'

queueStoreContract('memory', async () => {
  const h: StoreHarness = {
    store: new MemoryQueueStore(),
    async forget() {
      // A process restart: the embedded store starts empty.
      h.store = new MemoryQueueStore()
    },
  }
  return h
})

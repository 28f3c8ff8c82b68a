import { pgliteDb } from '../src/adapters/postgres/pglite.js'
import { bookingContract } from './contract/booking.js'

// The embedded database of `npm start` passes the same contract as the server.
bookingContract('embedded PGlite', () => pgliteDb())

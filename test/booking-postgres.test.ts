import { inject } from 'vitest'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { bookingContract } from './contract/booking.js'

bookingContract('PostgreSQL server', async () => postgresDb(inject('postgresUrl'), { max: 20 }))

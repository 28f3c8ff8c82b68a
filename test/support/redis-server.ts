// The tests start redis-server with the same starter as the bench and the simulator (scripts/lib).
export { freePort } from '../../scripts/lib/free-port.js'
export { type RedisServer, startRedis } from '../../scripts/lib/redis-server.js'

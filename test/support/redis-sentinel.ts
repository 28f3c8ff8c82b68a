// The tests start a Sentinel set with the same starter as the simulator's failover sale (scripts/lib).
export * from '../../scripts/lib/redis-sentinel.js'

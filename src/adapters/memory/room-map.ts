// A memory store's rooms by id, each made on first use: the access, defence and queue stores keep
// their per-room state in one.

export class RoomMap<Room> extends Map<string, Room> {
  /** @param make a new room's empty state */
  constructor(private readonly make: () => Room) {
    super()
  }

  /** The room `id`, made the first time it is asked for. */
  of(id: string): Room {
    let room = this.get(id)
    if (room === undefined) {
      room = this.make()
      this.set(id, room)
    }
    return room
  }
}

// Preloaded (`node --import`) into a peer that has no option for the address it listens on (supergateway 4.0.0
// listens on every interface): a listen on a port alone is made a listen on 127.0.0.1, so the bench opens no port
// beyond loopback.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  return (listen as (...a: unknown[]) => net.Server).apply(this, args);
} as typeof listen;

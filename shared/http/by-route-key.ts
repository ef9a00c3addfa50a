import type { Handler } from './handler.ts';

/**
 * One Lambda for several routes that share their logic (e.g. the live queries under /system-tools/devices
 * and /devices): each route keeps its own chain (its parameters differ), chosen by the event's routeKey.
 */
export function byRouteKey(handlers: Record<string, Handler>): Handler {
  return (event, context) => {
    const handler = handlers[event.routeKey];
    if (!handler) throw new Error(`No handler for route ${event.routeKey}`);
    return handler(event, context);
  };
}

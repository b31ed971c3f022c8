/**
 * The calendar service as hosted by a process (see services/kit/service-module.ts).
 * RPCs not yet implemented answer the standard gRPC UNIMPLEMENTED status.
 */
import { join } from 'node:path';
import type { ServiceModule } from '../kit/service-module';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';

export const calendarModule: ServiceModule = {
  name: 'calendar',
  protoServices: [CalendarService.typeName],
  migrations: { prefix: 'calendar', dir: join(__dirname, 'migrations') },
  routes(router) {
    router.service(CalendarService, {});
  },
};

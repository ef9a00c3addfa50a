import { route } from '#shared/http/route.ts';
import { previewSchedule } from '#shared/schedules/preview.ts';
import * as schedules from '#shared/schedules/schemas.ts';

/** The routes of the schedule engine. */
export const routes = {
  'GET /api/v1/schedules/preview': route(
    {
      operationId: 'schedulesPreview',
      auth: 'userOrApiKey',
      tag: 'schedules',
      summary:
        'The first occurrences of an RFC 5545 rule from its local DTSTART on, in local time and UTC (DST read as RFC 5545 says)',
      query: schedules.previewQuery,
      response: schedules.preview,
      errors: [400, 401],
    },
    async ({ query }) => previewSchedule(query),
  ),
} as const;

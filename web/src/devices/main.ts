/**
 * The Devices page: per organization, the devices list (filtered with the device-group filter language, custom
 * fields as optional columns, CSV of the rows shown) and, with ?device=<id>, one device's page (its effective
 * policies and where each comes from, monitor states with their last samples, open alerts, groups, custom fields).
 * The view lives in the address: ?org=&filter=&fields=&page= or ?org=&device=.
 */
import { startPage } from '../page-shell.ts';
import { showDevice } from './device.ts';
import { showList } from './list.ts';

startPage('devices.html', (context) => {
  const deviceId = new URLSearchParams(location.search).get('device');
  return deviceId ? showDevice(context, deviceId) : showList(context);
});

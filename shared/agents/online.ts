/** A device is online while its agent was seen within this many minutes (filters, the viewer, device.online). */
export const onlineWindowMinutes = 5;

/** The task's two tools, used in a chain: the distance first, then the price for that distance. */
import { defineTool, z } from 'rollout-studio';
import { CITIES, distanceKm, shippingCost } from './world';

export const distance = defineTool({
  name: 'distance',
  description: 'The road distance in kilometres between two cities.',
  parameters: z.object({
    origin: z.enum(CITIES).describe('Where the parcel leaves from.'),
    destination: z.enum(CITIES).describe('Where it goes.'),
  }),
  execute: ({ origin, destination }) => `${distanceKm(origin, destination)} km`,
});

export const shippingQuote = defineTool({
  name: 'shipping_cost',
  description: 'The price in euros to ship a parcel of a given weight over a given distance.',
  parameters: z.object({
    weight_kg: z.number().positive().describe('The weight of the parcel in kilograms.'),
    distance_km: z.number().positive().describe('The distance in kilometres.'),
  }),
  execute: ({ weight_kg, distance_km }) => `${shippingCost(weight_kg, distance_km)} EUR`,
});

export const tools = [distance, shippingQuote];

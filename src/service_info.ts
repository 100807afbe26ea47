// The service's name and version: the OpenAPI description and the User-Agent of webhook calls.
export const SERVICE_NAME = "credit-api";
export const SERVICE_VERSION = "1.0.0";

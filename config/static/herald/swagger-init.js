"use strict";
// Starts Swagger UI on /docs/ (config/templates/herald/swagger_ui.html). A static file rather
// than drf-spectacular's inline script, so the Content-Security-Policy forbids inline script on
// this page too; the page passes the schema URL, the SWAGGER_UI_SETTINGS (JSON) and the CSRF
// header in data attributes of #swagger-ui.
(() => {
  const root = document.getElementById("swagger-ui");
  const data = root.dataset;
  const settings = JSON.parse(data.settings || "{}");

  // "Try it out" with the browser session: writes to Herald's own origin carry the CSRF token.
  const requestInterceptor = (request) => {
    if (!["GET", undefined].includes(request.method) && request.credentials === "same-origin") {
      request.headers[data.csrfHeader] = data.csrfToken;
    }
    return request;
  };

  window.ui = SwaggerUIBundle({
    url: data.schemaUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    requestInterceptor,
    ...settings,
  });
})();

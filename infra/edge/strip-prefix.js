// vwr API prefix strip: CloudFront Function (cloudfront-js-2.0), viewer
// request on /vwr-api/*. The waiting page calls /vwr-api/vwr/…; the HTTP API
// serves /vwr/…, so the prefix goes before the request reaches the origin.
const PREFIX = '/vwr-api';

function handler(event) {
    const req = event.request;
    if (req.uri.indexOf(PREFIX + '/') === 0) {
        req.uri = req.uri.slice(PREFIX.length);
    }
    return req;
}

// vwr page index: CloudFront Function (cloudfront-js-2.0), viewer request on
// /vwr/*. S3 has no directory index behind Origin Access Control, and the
// edge check redirects to /vwr/?event=…, so a path ending in / gets index.html.
function handler(event) {
    const req = event.request;
    if (req.uri.endsWith('/')) {
        req.uri += 'index.html';
    }
    return req;
}

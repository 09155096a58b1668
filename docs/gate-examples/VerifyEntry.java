// Verify a vwr entry token in Java with Auth0's java-jwt
// (com.auth0:java-jwt:4.5.0).
import com.auth0.jwt.JWT;
import com.auth0.jwt.algorithms.Algorithm;
import com.auth0.jwt.exceptions.JWTVerificationException;
import com.auth0.jwt.interfaces.DecodedJWT;
import com.auth0.jwt.interfaces.JWTVerifier;
import java.nio.charset.StandardCharsets;

public final class VerifyEntry {
    private static final long SKEW_SECONDS = 30; // how far in the future iat may lie

    private final JWTVerifier verifier;

    /** secret is the queue's QUEUE_ENTRY_TOKEN_SECRET. */
    public VerifyEntry(String secret) {
        verifier = JWT.require(Algorithm.HMAC256(secret.getBytes(StandardCharsets.UTF_8))) // HS256 only
                .withIssuer("vwr")
                .withAudience("vwr-entry") // a Tier 1 pass ("vwr-tier1") is not an entry token
                .withClaimPresence("uid")
                .withClaimPresence("sub")
                .acceptExpiresAt(0) // exp is strict: the queue renews tokens, it never needs slack
                .acceptIssuedAt(SKEW_SECONDS)
                .build();
    }

    /** Returns the visitor's id if token lets them into eventId now; throws otherwise. */
    public String verify(String token, String eventId) throws JWTVerificationException {
        DecodedJWT jwt = verifier.verify(token);
        if (jwt.getExpiresAt() == null || jwt.getIssuedAt() == null) {
            throw new JWTVerificationException("exp and iat are required");
        }
        if (!eventId.equals(jwt.getSubject())) {
            throw new JWTVerificationException("token is for another event");
        }
        String uid = jwt.getClaim("uid").asString();
        if (uid == null || uid.isEmpty()) {
            throw new JWTVerificationException("no uid");
        }
        return uid;
    }

    // java VerifyEntry <token> <eventId>, with QUEUE_ENTRY_TOKEN_SECRET set.
    public static void main(String[] args) {
        try {
            String uid = new VerifyEntry(System.getenv("QUEUE_ENTRY_TOKEN_SECRET")).verify(args[0], args[1]);
            System.out.println("{\"ok\":true,\"uid\":\"" + uid + "\"}");
        } catch (JWTVerificationException e) {
            System.out.println("{\"ok\":false,\"error\":\"" + e.getClass().getSimpleName() + "\"}");
            System.exit(1);
        }
    }
}

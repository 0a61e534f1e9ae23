package receipt_test

import "github.com/heraldhq/herald/internal/config"

func secretEnv(name string) config.Secret { return config.Secret{Env: name} }

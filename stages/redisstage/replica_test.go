package redisstage_test

const replicaEnv = "FRONTDOOR_TEST_REPLICA"

func replicaMain() int { return 0 }

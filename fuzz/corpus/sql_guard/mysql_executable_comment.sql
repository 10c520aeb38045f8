SELECT 1 /*!50001 , SLEEP(1) */ # c
-- x
, `a``b`